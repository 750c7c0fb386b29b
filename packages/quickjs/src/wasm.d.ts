/** The few WebAssembly globals the sandbox uses (the project's lib has no DOM types, and @types/node 20 none of these). */
declare namespace WebAssembly {
  class Module {
    private constructor();
  }
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number });
    readonly buffer: ArrayBuffer;
  }
  function compile(bytes: ArrayBufferView | ArrayBuffer): Promise<Module>;
}
