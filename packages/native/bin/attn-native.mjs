#!/usr/bin/env node
// The `attn-native` command (source builds of attn addons); the code is src/cli.ts, built to dist/.
import process from 'node:process';
import { main } from '../dist/cli.js';

process.exitCode = main(process.argv.slice(2));
