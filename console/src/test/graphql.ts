import { Client, fetchExchange } from 'urql';

/**
 * A GraphQL endpoint for component tests: records each request's variables and answers with `answer(variables)`
 * as the `data` of the response (a real urql client, so documents, fragments and typenames go the real way).
 */
export function fakeGraphQL(answer: (variables: Record<string, unknown>) => unknown) {
  const sent: Record<string, unknown>[] = [];
  const client = new Client({
    url: 'http://console.test/graphql',
    exchanges: [fetchExchange],
    fetch: async (url, init) => {
      // Queries may come as GET (urql's preferGetMethod), with the variables in the URL.
      const encoded = init?.body ? JSON.parse(String(init.body)).variables : new URL(String(url)).searchParams.get('variables');
      const variables = ((typeof encoded === 'string' ? JSON.parse(encoded) : encoded) ?? {}) as Record<string, unknown>;
      sent.push(variables);
      return new Response(JSON.stringify({ data: answer(variables) }), { headers: { 'content-type': 'application/json' } });
    },
  });
  return { client, sent };
}
