// The parent side of child.mjs: one child process at a time runs cases in turn. When it dies in
// the middle of a case (a signal, an exit) or a case runs past its time limit, that case is a
// failure that says so, and the next case starts a fresh child.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CaseResult } from './worker.js';

const CHILD = fileURLToPath(new URL('./child.mjs', import.meta.url));
const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

export type ChildResult = CaseResult | { readonly status: 'crash' | 'hang'; readonly message: string };

interface Pending {
  readonly resolve: (r: ChildResult) => void;
  readonly timer: NodeJS.Timeout;
}

export class FuzzChildPool {
  #child: ChildProcess | null = null;
  #ready: Promise<void> | null = null;
  #pending = new Map<number, Pending>();
  #nextId = 0;

  /** modules: absolute paths of the backend packages' entry files (they register on import). */
  constructor(
    private readonly modules: readonly string[],
    private readonly timeoutMs: number,
  ) {}

  #start(): Promise<void> {
    const child = fork(CHILD, [JSON.stringify({ modules: this.modules, worker: WORKER })], {
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    this.#child = child;
    const ready = new Promise<void>((resolve, reject) => {
      child.once('message', (m: { ready?: boolean }) => (m.ready ? resolve() : reject(new Error('fuzz child: unexpected first message'))));
      child.once('exit', (code, signal) => reject(new Error(`fuzz child exited while loading (code ${code}, signal ${signal})`)));
    });
    // Settled by the callers of #ensure; this keeps an early exit from being an unhandled rejection.
    ready.catch(() => {});
    child.on('message', (m: { id?: number; result?: CaseResult; error?: string }) => {
      if (m.id === undefined) return;
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      clearTimeout(p.timer);
      p.resolve(m.error !== undefined ? { status: 'fail', message: `harness error in the child: ${m.error}` } : m.result!);
    });
    child.on('exit', (code, signal) => {
      if (this.#child === child) {
        this.#child = null;
        this.#ready = null;
      }
      for (const [id, p] of this.#pending) {
        clearTimeout(p.timer);
        p.resolve({ status: 'crash', message: `the child process died running this case (exit code ${code}, signal ${signal})` });
        this.#pending.delete(id);
      }
    });
    return ready;
  }

  #ensure(): Promise<void> {
    if (!this.#ready) this.#ready = this.#start();
    return this.#ready;
  }

  async run(fn: 'runValid' | 'runInvalid', ...args: unknown[]): Promise<ChildResult> {
    await this.#ensure();
    const child = this.#child!;
    const id = this.#nextId++;
    return new Promise<ChildResult>((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        resolve({ status: 'hang', message: `no answer within ${this.timeoutMs} ms; the child was killed` });
        // The next case starts a fresh child, not this dying one.
        if (this.#child === child) {
          this.#child = null;
          this.#ready = null;
        }
        child.kill('SIGKILL');
      }, this.timeoutMs);
      this.#pending.set(id, { resolve, timer });
      child.send({ id, fn, args });
    });
  }

  close(): void {
    const child = this.#child;
    this.#child = null;
    this.#ready = null;
    if (child && child.connected) child.disconnect();
  }
}
