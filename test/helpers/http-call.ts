import { request as httpRequest, type Agent } from 'node:http';

/** A response's status, or `error:<code>` when the request failed without one. */
export type Outcome = number | `error:${string}`;

/** One request over `agent` to 127.0.0.1; resolves with the outcome and the body, never rejects. */
export function call(agent: Agent, port: number, method: string, path: string, body?: string): Promise<{ outcome: Outcome; body: string }> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ outcome: res.statusCode!, body: text }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ outcome: `error:${err.code ?? err.message}`, body: '' }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ outcome: `error:${err.code ?? err.message}`, body: '' }));
    req.end(body);
  });
}
