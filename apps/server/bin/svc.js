#!/usr/bin/env node
// Entry point of the `svc` command: TypeScript sources run through tsx's loader.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/program.ts');
await runCli(process.argv);
