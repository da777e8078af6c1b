/** How an engine server is started. */
export interface EngineOptions {
  /** Folder of the engine's data, made if missing and kept by `stop`; default a temporary one that `stop` removes. */
  dir?: string;
  /**
   * Start the server in a process group of its own, so that a Ctrl-C at the terminal reaches only
   * the program that started it, which then stops it in its own order. Default false: the server
   * goes with its parent's group.
   */
  ownProcessGroup?: boolean;
}
