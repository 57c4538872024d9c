// cpu-math runs the suite every backend runs. Against itself it checks the dtype plumbing (inputs
// in four dtypes, outputs rounded once) and, through the suite's naive implementation, its semantics.
import { describeConformance } from '@attn/conformance';
import '../index.js';

describeConformance('cpu-math', { quick: true });
