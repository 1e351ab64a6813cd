import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A message as Postmark received it. */
export interface PeerMessage {
  MessageID: string;
  From: string;
  To: string;
  Subject: string;
  HtmlBody?: string;
  TextBody?: string;
  Tag?: string;
  MessageStream?: string;
  Metadata?: Record<string, string>;
}

type Fault = { status: number; errorCode: number; message: string; drop?: boolean };

/**
 * A local stand-in for Postmark's API: POST /email, POST /email/batch (HTTP 200 with a per-message
 * ErrorCode), GET /messages/outbound (search, including metadata_<key>=value). Accepted messages are
 * recorded. Faults: per-address ErrorCodes, whole-request failures (HTTP 5xx/422), and "accept then drop
 * the connection" (Postmark took the message, the caller never heard back).
 */
export async function startPostmarkPeer(token = 'test-postmark-token') {
  const messages: PeerMessage[] = [];
  const requests: { method: string; path: string }[] = [];
  const addressFaults = new Map<string, { errorCode: number; message: string }>();
  const requestFaults: Fault[] = [];
  let answerDelayMs = 0;

  const accept = (message: Omit<PeerMessage, 'MessageID'>) => {
    const recorded = { ...message, MessageID: randomUUID() };
    messages.push(recorded);
    return { To: message.To, SubmittedAt: new Date().toISOString(), MessageID: recorded.MessageID, ErrorCode: 0, Message: 'OK' };
  };
  const perMessage = (message: Omit<PeerMessage, 'MessageID'>) => {
    const fault = addressFaults.get(message.To.toLowerCase());
    return fault ? { To: message.To, ErrorCode: fault.errorCode, Message: fault.message } : accept(message);
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://peer');
    requests.push({ method: req.method ?? '', path: url.pathname });
    if (req.headers['x-postmark-server-token'] !== token) return json(res, 401, { ErrorCode: 10, Message: 'Bad or missing Server API token.' });
    if (req.method === 'GET' && url.pathname === '/messages/outbound') {
      const metadata = [...url.searchParams].filter(([key]) => key.startsWith('metadata_')).map(([key, value]) => [key.slice(9), value] as const);
      const found = messages.filter((message) => metadata.every(([key, value]) => message.Metadata?.[key] === value));
      return json(res, 200, { TotalCount: found.length, Messages: found.slice(0, Number(url.searchParams.get('count') ?? 100)).map((message) => ({ MessageID: message.MessageID, To: [{ Email: message.To }], Subject: message.Subject, Metadata: message.Metadata, Status: 'Sent' })) });
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString() || 'null');
    const fault = requestFaults.shift();
    if (req.method === 'POST' && (url.pathname === '/email' || url.pathname === '/email/batch')) {
      if (fault?.drop) {
        // Postmark accepted the message(s), but the answer never arrives.
        (Array.isArray(body) ? body : [body]).forEach(perMessage);
        req.socket.destroy();
        return;
      }
      if (fault) return json(res, fault.status, { ErrorCode: fault.errorCode, Message: fault.message });
      if (url.pathname === '/email/batch') {
        const results = (body as PeerMessage[]).map(perMessage);
        // Accepted (recorded) at once; the answer comes late, e.g. after the caller was killed.
        if (answerDelayMs) await new Promise((resolve) => setTimeout(resolve, answerDelayMs));
        return json(res, 200, results);
      }
      const result = perMessage(body as PeerMessage);
      return result.ErrorCode === 0 ? json(res, 200, result) : json(res, 422, { ErrorCode: result.ErrorCode, Message: result.Message });
    }
    json(res, 404, { ErrorCode: 404, Message: 'not found' });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => json(res, 500, { ErrorCode: 500, Message: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    token,
    url: `http://127.0.0.1:${port}`,
    messages,
    requests,
    /** Env for the app: Postmark pointed at this peer. */
    env: { POSTMARK_SERVER_TOKEN: token, POSTMARK_API_URL: `http://127.0.0.1:${port}`, MAIL_FROM: 'Keyforge <alerts@keyforge.test>' },
    /** Per-recipient ErrorCode: 406 inactive recipient, 300 invalid address, … */
    rejectAddress(address: string, errorCode: number, message = `Error ${errorCode}`) {
      addressFaults.set(address.toLowerCase(), { errorCode, message });
    },
    /** The next `times` send requests fail as a whole with this HTTP status and ErrorCode. */
    failRequests(times: number, status: number, errorCode: number, message = `Error ${errorCode}`) {
      for (let i = 0; i < times; i++) requestFaults.push({ status, errorCode, message });
    },
    /** The next send request is accepted, then the connection is cut before the answer. */
    dropNextAnswer() {
      requestFaults.push({ status: 0, errorCode: 0, message: '', drop: true });
    },
    /** Batch sends are accepted at once but answered `ms` later (0: at once). */
    delayAnswers(ms: number) {
      answerDelayMs = ms;
    },
    to: (address: string) => messages.filter((message) => message.To === address),
    reset() {
      messages.length = 0;
      requests.length = 0;
      addressFaults.clear();
      requestFaults.length = 0;
      answerDelayMs = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type PostmarkPeer = Awaited<ReturnType<typeof startPostmarkPeer>>;
