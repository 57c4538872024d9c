#!/usr/bin/env node
// The `attn` executable.
import { main } from './program.js';

process.exitCode = await main(process.argv.slice(2));
