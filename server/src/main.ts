import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHttpServer } from './app.js';
import { listeningMessage, startupBanner, startupFacts } from './banner.js';
import { startCliChannel } from './cli/channel.js';
import { bootProcess, listenProblem, onShutdown, portProblem } from './process-lifecycle.js';
import { needsSetup } from './services/users.js';

const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../console/dist');

/** `pnpm start`: the server process. Boots, serves HTTP (app.ts) until SIGTERM drains it or SIGINT stops it. */
async function main() {
  const { config, logger, runtime, jobs, metricsServer } = await bootProcess('server', (cfg) => cfg.jobsWorker, (cfg) => portProblem(cfg.port, cfg.host));
  const lifecycle = { draining: false };
  runtime.deps.lifecycle = lifecycle;
  const server = createHttpServer(runtime.deps, { consoleDir: CONSOLE_DIST });
  // On the embedded database the operator CLI works through the server (cli/channel.ts).
  const cliChannel = await startCliChannel(runtime.deps);

  server.listen(config.port, config.host, () => {
    void needsSetup(runtime.deps)
      .catch(() => false)
      .then((setup) => {
        const metricsUrl = metricsServer ? `http://${config.metrics!.host}:${(metricsServer.address() as AddressInfo).port}/metrics` : null;
        const port = (server.address() as AddressInfo).port;
        const facts = startupFacts(config, { store: jobs.store, mail: jobs.transport.name }, setup, metricsUrl, port);
        // A person at a terminal reads a banner; a log collector gets one JSON line with the same facts.
        if (process.stdout.isTTY) process.stdout.write(startupBanner(facts));
        else logger.info({ port, ...facts }, listeningMessage(facts));
      });
  });

  // Taken between the probe and here (another process was quicker): the same one line, then exit.
  server.once('error', (error: NodeJS.ErrnoException) => {
    logger.fatal(listenProblem(error, config.port, config.host));
    process.exit(1);
  });

  const drainMs = config.shutdownDrainSeconds * 1000;
  const timeoutMs = config.shutdownTimeoutSeconds * 1000;
  onShutdown(logger, config.shutdownDrainSeconds + config.shutdownTimeoutSeconds + 2, async (signal) => {
    // SIGTERM (an orchestrator, a rolling restart) drains; SIGINT (Ctrl-C at a terminal) stops at once.
    const drain = signal === 'SIGTERM' ? drainMs : 0;
    lifecycle.draining = true;
    logger.info({ signal, drainSeconds: drain / 1000 }, 'shutting down: /readyz answers 503, requests are still served until the drain ends');
    await new Promise((resolve) => setTimeout(resolve, drain));
    const closed = new Promise((resolve) => server.close(resolve));
    const channelClosed = cliChannel?.close();
    metricsServer?.close();
    // Idle keep-alive connections would hold close() open; busy ones finish their request first.
    server.closeIdleConnections();
    // Running jobs finish (up to the timeout) while in-flight requests complete.
    await Promise.all([closed, jobs.stop(timeoutMs), channelClosed]);
    await runtime.close();
    logger.info('stopped');
    process.exit(0);
  });
}

void main();
