// Placeholder until the admin console lands: points operators at what works today.
const app = document.querySelector<HTMLElement>('#app')!;
app.innerHTML = `
  <h1>Keyforge</h1>
  <p>The license service is running. The admin console is coming; until then use the operator CLI (<code>pnpm cli</code>).</p>
  <ul>
    <li><a href="/api/v1/openapi.json">Public API (OpenAPI 3.1)</a></li>
    <li><a href="/.well-known/jwks.json">Offline-token public keys (JWKS)</a></li>
    <li><a href="/readyz">Readiness</a></li>
  </ul>`;
