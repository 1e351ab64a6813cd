import { ActionIcon, Code, CopyButton, Paper, Tabs, Text, Title, Tooltip } from '@mantine/core';
import { IconCheck, IconCopy } from '@tabler/icons-react';
import { useLocalStorage } from '@mantine/hooks';
import { docsReference } from '../../../lib/docs';
import { INTEGRATE_SEEN_KEY } from '../../dashboard/components/OnboardingChecklist';
import { integrationSnippets, type Snippet, type SnippetLicense } from './snippets';

/** One snippet in a code block, with its copy button (a copy counts as "integrated" on the dashboard). */
function SnippetBlock({ snippet, onCopy }: { snippet: Snippet; onCopy: () => void }) {
  return (
    <div style={{ position: 'relative' }}>
      <CopyButton value={snippet.code} timeout={2000}>
        {({ copied, copy }) => (
          <Tooltip label={copied ? 'Copied' : 'Copy'} withArrow position="left">
            <ActionIcon variant="default" onClick={() => { copy(); onCopy(); }} aria-label={`Copy the ${snippet.label} snippet`} pos="absolute" top={8} right={8}>
              {copied ? <IconCheck size={16} /> : <IconCopy size={16} />}
            </ActionIcon>
          </Tooltip>
        )}
      </CopyButton>
      <Code block data-snippet={snippet.id} style={{ whiteSpace: 'pre', overflowX: 'auto', fontSize: 12 }}>
        {snippet.code}
      </Code>
    </div>
  );
}

/**
 * "Integrate": how the vendor's application talks to this server about this license, ready to copy — the
 * TypeScript SDK first, then the raw HTTP calls for other languages.
 */
export function IntegratePanel({ license, origin = window.location.origin }: { license: SnippetLicense; origin?: string }) {
  const [sdk, ...raw] = integrationSnippets(origin, license);
  // The dashboard's getting-started checklist counts a copied snippet as "integrated".
  const [, setIntegrateSeen] = useLocalStorage({ key: INTEGRATE_SEEN_KEY, defaultValue: false });
  const copied = () => setIntegrateSeen(true);
  return (
    <Paper p="lg">
      <Title order={3} size="h4" mb={4}>
        Integrate
      </Title>
      <Text size="sm" c="dimmed" mb="sm">
        Your application activates once per installation and validates on every launch, against <Code>{origin}/api/v1</Code>. Replace
        LICENSE_KEY with the key shown when this license was created (or its key last reissued).
      </Text>
      <Title order={4} size="h5" mb={4}>
        {sdk.label} <Text span size="sm" c="dimmed">(Node, Electron, Deno, Bun, browsers)</Text>
      </Title>
      <Text size="sm" c="dimmed" mb="xs">
        <Code>@keyforge/client</Code> does the protocol for you: a fresh nonce per activation, safe retries with backoff and{' '}
        <Code>Retry-After</Code>, the signed offline token verified and kept for the offline grace period, floating-seat heartbeats and
        idempotent metering: see the {docsReference('sdk')}.
      </Text>
      <SnippetBlock snippet={sdk} onCopy={copied} />
      <Title order={4} size="h5" mt="md" mb={4}>
        Raw HTTP, for other languages
      </Title>
      <Tabs defaultValue={raw[0].id} keepMounted={false}>
        <Tabs.List>
          {raw.map((snippet) => (
            <Tabs.Tab key={snippet.id} value={snippet.id}>
              {snippet.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        {raw.map((snippet) => (
          <Tabs.Panel key={snippet.id} value={snippet.id} pt="sm">
            <SnippetBlock snippet={snippet} onCopy={copied} />
          </Tabs.Panel>
        ))}
      </Tabs>
    </Paper>
  );
}
