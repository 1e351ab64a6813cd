import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { bootProcess, listenProblem, onShutdown, portProblem } from './boot.js';
import { startupBanner, startupFacts } from './banner.js';
import { createApp } from './http/app.js';
import { needsSetup } from './services/users.js';

const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../console/dist');

async function main() {
  const { config, logger, runtime, jobs, metricsServer } = await bootProcess('server', (cfg) => cfg.jobsWorker, (cfg) => portProblem(cfg.port, cfg.host));
  const app = createApp(runtime.deps, { consoleDir: CONSOLE_DIST });

  const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
    void needsSetup(runtime.deps)
      .catch(() => false)
      .then((setup) => {
        const metricsUrl = metricsServer ? `http://${config.metrics!.host}:${(metricsServer.address() as AddressInfo).port}/metrics` : null;
        const facts = startupFacts(config, { store: jobs.store, mail: jobs.transport.name }, setup, metricsUrl);
        // A person at a terminal reads a banner; a log collector gets one JSON line with the same facts.
        if (process.stdout.isTTY) process.stdout.write(startupBanner(facts));
        else logger.info({ port: info.port, ...facts }, `license service listening on ${config.publicUrl}`);
      });
  });

  // Taken between the probe and here (another process was quicker): the same one line, then exit.
  server.once('error', (error: NodeJS.ErrnoException) => {
    logger.fatal(listenProblem(error, config.port, config.host));
    process.exit(1);
  });

  onShutdown(logger, (signal) => {
    logger.info({ signal }, 'shutting down');
    // Running jobs finish (up to 8 s) while in-flight requests drain.
    const jobsStopped = jobs.stop();
    metricsServer?.close();
    server.close(async () => {
      await jobsStopped;
      await runtime.close();
      logger.info('stopped');
      process.exit(0);
    });
    // Idle keep-alive connections would hold close() open; busy ones get the rest of the 10 s.
    (server as Server).closeIdleConnections();
  });
}

void main();
