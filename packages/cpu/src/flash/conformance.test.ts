// cpu-flash runs the suite every backend runs, against cpu-math.
import { describeConformance } from '@attn/conformance';
import '../index.js';

describeConformance('cpu-flash', { quick: true });
