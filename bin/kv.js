#!/usr/bin/env node
// The `kv` command. Node 24 runs the TypeScript sources directly (type stripping).
import { runKv } from '../services/cli/kv-main.ts';

process.exitCode = await runKv(process.argv.slice(2));
