import { Code, Tabs } from '@mantine/core';
import { useQuery } from 'urql';
import type { VariablesOf } from '../../../graphql';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { EmailBodiesQuery } from '../graphql/documents';

/** An email as sent: the HTML in a sandboxed frame (no scripts, no same-origin access), and the text part. */
export function EmailPreview({ id, page }: { id: string; page: VariablesOf<typeof EmailBodiesQuery> }) {
  const [result, reload] = useQuery({ query: EmailBodiesQuery, variables: page });
  return (
    <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
      {(data) => {
        const email = data.emails.nodes.find((node) => node.id === id);
        if (!email) return <EmptyState title="This email is no longer on this page" />;
        return (
          <Tabs defaultValue="html">
            <Tabs.List>
              <Tabs.Tab value="html">HTML</Tabs.Tab>
              <Tabs.Tab value="text">Text</Tabs.Tab>
            </Tabs.List>
            <Tabs.Panel value="html" pt="sm">
              <iframe title="Email HTML" sandbox="" srcDoc={email.htmlBody ?? ''} style={{ width: '100%', height: 520, border: '1px solid var(--mantine-color-gray-3)', borderRadius: 8, background: 'white' }} />
            </Tabs.Panel>
            <Tabs.Panel value="text" pt="sm">
              <Code block>{email.textBody ?? ''}</Code>
            </Tabs.Panel>
          </Tabs>
        );
      }}
    </QueryState>
  );
}
