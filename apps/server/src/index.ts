export { buildApp, type AppOptions } from './app';
export { loadConfig, type ServerConfig } from './config';
export { createServices, closeServices, type Services } from './services';
export { serve, type RunningServer } from './serve';
export { runCli, buildProgram } from './cli/program';
