// The transcript property without ageObservations (test/workflows/transcript-property.ts; with them:
// agent-run-transcript-aged.test.ts).
import { transcriptProperty } from './transcript-property.js';

transcriptProperty(false);
