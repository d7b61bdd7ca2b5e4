// A static file server for the playground, on 127.0.0.1 only.
// Usage: node serve.mjs <dir> [port] [prefix]; port 0 picks a free one. With
// a prefix (e.g. /os-placement/) the folder is served under that path only,
// as GitHub Pages serves a project site, and the bare prefix redirects to it.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm',
  '.yaml': 'text/yaml; charset=utf-8', '.json': 'application/json',
};

export function serve(dir, port = 0, prefix = '/') {
  const root = resolve(dir);
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    if (prefix !== '/' && path === prefix.replace(/\/$/, '')) {
      res.writeHead(301, { location: prefix }).end();
      return;
    }
    if (!path.startsWith(prefix)) { res.writeHead(404).end('not found'); return; }
    const inside = '/' + path.slice(prefix.length);
    const file = normalize(join(root, inside.endsWith('/') ? inside + 'index.html' : inside));
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const prefix = process.argv[4] || '/';
  const server = await serve(process.argv[2] || 'playground/dist', Number(process.argv[3] || 8390), prefix);
  console.log(`playground: http://127.0.0.1:${server.address().port}${prefix} (Ctrl-C to stop)`);
}
