export * from './access.js';
export * from './answers.js';
export * from './content.js';
export * from './dispatcher.js';
export * from './input.js';
export * from './operations/drive.js';
export * from './operations/threads.js';
