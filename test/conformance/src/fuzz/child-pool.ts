// The parent side of child.mjs: one child process at a time runs cases in turn. When it dies in
// the middle of a case (a signal, an exit) or a case runs past its time limit, that case is a
// failure that says so, and the next case starts a fresh child.
import { type ChildProcess, fork, spawn, type StdioOptions } from 'node:child_process';
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

  /** How every child this pool started ended (a sanitizer reports its findings in the exit code). */
  readonly #exits: { code: number | null; signal: NodeJS.Signals | null }[] = [];

  /**
   * modules: absolute paths (or package names) of the backends' entry files, which register on
   * import. sanitizer: a command line the child runs under, e.g. compute-sanitizer's.
   */
  constructor(
    private readonly modules: readonly string[],
    private readonly timeoutMs: number,
    private readonly sanitizer: readonly string[] | null = null,
  ) {}

  #start(): Promise<void> {
    const arg = JSON.stringify({ modules: this.modules, worker: WORKER });
    const options = {
      serialization: 'advanced' as const,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'] as StdioOptions,
    };
    // Under a sanitizer (compute-sanitizer memcheck on a GPU host) the child is its target; the
    // IPC channel's descriptor and NODE_CHANNEL_FD pass through to the node process it starts.
    const child = this.sanitizer
      ? spawn(this.sanitizer[0]!, [...this.sanitizer.slice(1), process.execPath, CHILD, arg], options)
      : fork(CHILD, [arg], { ...options, execArgv: [] });
    this.#child = child;
    child.once('exit', (code, signal) => this.#exits.push({ code, signal }));
    const ready = new Promise<void>((resolve, reject) => {
      child.once('message', (m: { ready?: boolean }) =>
        m.ready ? resolve() : reject(new Error('fuzz child: unexpected first message')),
      );
      child.once('exit', (code, signal) =>
        reject(new Error(`fuzz child exited while loading (code ${code}, signal ${signal})`)),
      );
    });
    // Settled by the callers of #ensure; this keeps an early exit from being an unhandled rejection.
    ready.catch(() => {});
    child.on('message', (m: { id?: number; result?: CaseResult; error?: string }) => {
      if (m.id === undefined) return;
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      clearTimeout(p.timer);
      p.resolve(
        m.error !== undefined ? { status: 'fail', message: `harness error in the child: ${m.error}` } : m.result!,
      );
    });
    child.on('exit', (code, signal) => {
      if (this.#child === child) {
        this.#child = null;
        this.#ready = null;
      }
      for (const [id, p] of this.#pending) {
        clearTimeout(p.timer);
        p.resolve({
          status: 'crash',
          message: `the child process died running this case (exit code ${code}, signal ${signal})`,
        });
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

  /** Ends the current child and resolves with how every child of this pool exited. */
  async close(): Promise<readonly { code: number | null; signal: NodeJS.Signals | null }[]> {
    const child = this.#child;
    this.#child = null;
    this.#ready = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      if (child.connected) child.disconnect();
      await exited;
    }
    return this.#exits;
  }
}
