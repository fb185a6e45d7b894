import { isNotifySecret, nextDelayMs, notifyAllowed, signNotification, STATE_CHANGED, unsendableUrl } from '../../core/notify.ts';
import { runView } from '../routes/runs.ts';
import type { Service, ServiceFactory } from '../services.ts';
import { secretAllows } from '../store/secrets.ts';
import type { DueNotification } from '../store/runs.ts';

/**
 * Run notifications (docs/api.md#run-notifications): sends the outbox that the run store fills in
 * the same transaction as each state change. Each notification is a Standard Webhooks POST
 * `{type: "run.state_changed", run}`; a non-2xx answer, a redirect, a timeout or a connection
 * failure is retried after the configured waits, and the last failure gives up. Every attempt is
 * recorded. Sending is asynchronous (fetch) and bounded (MAX_IN_FLIGHT), so it never holds up a
 * run or the event loop. The outbox is in the database: a restart carries on where it stopped
 * (an attempt cut short by the stop is made again, with the same webhook-id).
 */

/** Notifications sent at once; the rest wait for the next turn. */
const MAX_IN_FLIGHT = 8;
/** A safety net: the outbox is also read this often, should a wake ever be missed. */
const POLL_MS = 5_000;
/** Error text kept per attempt. */
const ERROR_MAX = 300;

export interface Notifier extends Service {
  /** Reads the outbox soon (after the current turn). */
  wake(): void;
  /** Resolves when nothing is being sent (tests, shutdown). */
  idle(): Promise<void>;
}

declare module '../services.ts' {
  interface Services {
    notifier?: Notifier;
  }
}

export const notifierService: ServiceFactory = {
  name: 'notifier',
  create({ store, clock, log, config }): Notifier {
    const inFlight = new Map<number, Promise<void>>();
    const controllers = new Set<AbortController>();
    let timer: NodeJS.Timeout | undefined;
    let woken = false;
    let stopped = true;

    /** The secret that signs a notification: the run's own, or its automation's team secret. */
    const secretOf = (n: DueNotification): string | { error: string } => {
      if (n.notify.secret !== undefined) return n.notify.secret;
      const name = n.notify.secretName;
      if (name === undefined) return { error: 'the run has no notification secret' };
      const meta = store.secrets.get(name);
      const value = meta && (n.run.factory === null || secretAllows(meta, n.run.factory)) ? store.secrets.reveal(name) : undefined;
      if (value === undefined) return { error: `the secret "${name}" does not exist, has no value, or may not be used by the factory "${n.run.factory}"` };
      if (!isNotifySecret(value)) return { error: `the secret "${name}" is not a Standard Webhooks secret (whsec_ followed by the base64 of 24 to 64 bytes)` };
      return value;
    };

    /** Why this notification cannot be sent at all, before any request: recorded as its attempt's error. */
    const refusal = (n: DueNotification): { error: string } | { secret: string } => {
      // A URL stored before the compiler checked it as the API does (docs/api.md#run-notifications);
      // one stored before URLs had to be written as the parser spells them is still sent to.
      const bad = unsendableUrl(n.notify.url);
      if (bad !== undefined) return { error: `the URL ${bad}` };
      const secret = secretOf(n);
      if (typeof secret !== 'string') return secret;
      if (!notifyAllowed(n.notify.url, config.notify.allow)) return { error: 'the URL is not allowed by the runtime\'s --notify-allow list' };
      return { secret };
    };

    const attempt = async (n: DueNotification): Promise<void> => {
      const number = n.attempts + 1;
      let result: { statusCode: number | null; error: string | null };
      let checked: ReturnType<typeof refusal>;
      try {
        checked = refusal(n);
      } catch (err) {
        // Whatever goes wrong is this attempt's failure, recorded: never a row picked up again at once.
        checked = { error: `could not be prepared: ${(err as Error).message}`.slice(0, ERROR_MAX) };
      }
      if ('error' in checked) {
        result = { statusCode: null, error: checked.error };
      } else {
        const secret = checked.secret;
        const body = JSON.stringify({ type: STATE_CHANGED, run: runView(n.run, config.baseUrl) });
        const timestamp = Math.floor(clock.now().getTime() / 1000);
        const controller = new AbortController();
        controllers.add(controller);
        const timeout = setTimeout(() => controller.abort(new Error(`no answer within ${config.notify.timeoutMs} ms`)), config.notify.timeoutMs);
        try {
          const res = await fetch(n.notify.url, {
            method: 'POST',
            // A redirect is a failure: following it could leave the allow-list.
            redirect: 'manual',
            signal: controller.signal,
            headers: {
              'content-type': 'application/json',
              'user-agent': 'factory-notifications',
              'webhook-id': n.messageId,
              'webhook-timestamp': String(timestamp),
              'webhook-signature': signNotification(secret, n.messageId, timestamp, body),
            },
            body,
          });
          await res.body?.cancel().catch(() => {});
          result = { statusCode: res.status, error: res.status >= 200 && res.status < 300 ? null : `the target answered ${res.status}` };
        } catch (err) {
          if (stopped) return; // Cut short by the stop: not an attempt; sent again after a restart.
          const cause = (err as { cause?: { code?: string; message?: string } }).cause;
          // The timeout's own reason already reads "no answer within N ms"; anything else is the cause of no answer.
          const error = controller.signal.aborted
            ? String((controller.signal.reason as Error)?.message ?? 'no answer: timed out')
            : `no answer: ${cause?.code ?? cause?.message ?? (err as Error).message}`;
          result = { statusCode: null, error: error.slice(0, ERROR_MAX) };
        } finally {
          clearTimeout(timeout);
          controllers.delete(controller);
        }
      }
      const delay = result.error === null ? undefined : nextDelayMs(config.notify.retryDelaysMs, number);
      const outcome =
        result.error === null ? ({ status: 'delivered' } as const)
        : delay === undefined ? ({ status: 'failed' } as const)
        : ({ status: 'pending', nextMs: clock.now().getTime() + delay } as const);
      store.runs.recordNotificationAttempt(n.seq, number, result, outcome);
      if (outcome.status === 'failed') log.warn({ runId: n.runId, messageId: n.messageId, attempts: number }, 'run notification given up');
      else if (outcome.status === 'pending') log.info({ runId: n.runId, messageId: n.messageId, attempt: number, statusCode: result.statusCode }, 'run notification failed; will retry');
    };

    const tick = () => {
      woken = false;
      if (stopped) return;
      if (timer) clearTimeout(timer);
      timer = undefined;
      const free = MAX_IN_FLIGHT - inFlight.size;
      if (free > 0) {
        try {
          // Held long enough for one attempt to end, so another replica does not send it meanwhile.
          const holdMs = config.notify.timeoutMs * 2 + 5_000;
          const due = store.runs.dueNotifications(clock.now(), free + inFlight.size, holdMs).filter((n) => !inFlight.has(n.seq)).slice(0, free);
          for (const n of due) {
            const p = attempt(n)
              .catch((err) => log.error({ err, runId: n.runId }, 'a run notification could not be recorded'))
              .finally(() => {
                inFlight.delete(n.seq);
                wake();
              });
            inFlight.set(n.seq, p);
          }
        } catch (err) {
          log.error({ err }, 'the notification outbox could not be read');
        }
      }
      // The next due retry, or the safety poll, whichever comes first.
      // Those due by now are in flight or wait for a slot: the end of an attempt wakes this again, so
      // the wait is for the next one due later (waiting on a due one in flight would spin).
      const now = clock.now();
      const next = store.runs.nextNotificationMs(now);
      const wait = next === undefined ? POLL_MS : Math.max(0, Math.min(POLL_MS, next - now.getTime()));
      timer = setTimeout(tick, wait);
      timer.unref();
    };

    const wake = () => {
      if (woken || stopped) return;
      woken = true;
      setImmediate(tick);
    };

    return {
      wake,
      async idle() {
        while (inFlight.size) await Promise.all(inFlight.values());
      },
      start() {
        stopped = false;
        store.runs.onNotificationQueued(wake);
        wake();
      },
      async stop() {
        stopped = true;
        store.runs.onNotificationQueued(undefined);
        if (timer) clearTimeout(timer);
        timer = undefined;
        for (const c of controllers) c.abort(new Error('the runtime is stopping'));
        await Promise.allSettled(inFlight.values());
      },
    };
  },
};
