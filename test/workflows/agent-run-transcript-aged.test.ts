// The transcript property with ageObservations (test/workflows/transcript-property.ts; without them:
// agent-run-transcript.test.ts).
import { transcriptProperty } from './transcript-property.js';

transcriptProperty(true);
