import { ActionIcon, Code, CopyButton, Paper, Tabs, Text, Title, Tooltip } from '@mantine/core';
import { IconCheck, IconCopy } from '@tabler/icons-react';
import { useLocalStorage } from '@mantine/hooks';
import { INTEGRATE_SEEN_KEY } from '../../dashboard/components/OnboardingChecklist';
import { integrationSnippets, type SnippetLicense } from './snippets';

/** "Integrate": how the vendor's application talks to this server about this license, ready to copy. */
export function IntegratePanel({ license, origin = window.location.origin }: { license: SnippetLicense; origin?: string }) {
  const snippets = integrationSnippets(origin, license);
  // The dashboard's getting-started checklist counts a copied snippet as "integrated".
  const [, setIntegrateSeen] = useLocalStorage({ key: INTEGRATE_SEEN_KEY, defaultValue: false });
  return (
    <Paper p="lg">
      <Title order={3} size="h4" mb={4}>
        Integrate
      </Title>
      <Text size="sm" c="dimmed" mb="sm">
        Your application activates once per installation and validates on every launch, against <Code>{origin}/api/v1</Code>. Replace
        LICENSE_KEY with the key shown when this license was created.
      </Text>
      <Tabs defaultValue={snippets[0].id} keepMounted={false}>
        <Tabs.List>
          {snippets.map((snippet) => (
            <Tabs.Tab key={snippet.id} value={snippet.id}>
              {snippet.label}
            </Tabs.Tab>
          ))}
        </Tabs.List>
        {snippets.map((snippet) => (
          <Tabs.Panel key={snippet.id} value={snippet.id} pt="sm" pos="relative">
            <CopyButton value={snippet.code} timeout={2000}>
              {({ copied, copy }) => (
                <Tooltip label={copied ? 'Copied' : 'Copy'} withArrow position="left">
                  <ActionIcon variant="default" onClick={() => { copy(); setIntegrateSeen(true); }} aria-label={`Copy the ${snippet.label} snippet`} pos="absolute" top={16} right={8}>
                    {copied ? <IconCheck size={16} /> : <IconCopy size={16} />}
                  </ActionIcon>
                </Tooltip>
              )}
            </CopyButton>
            <Code block data-snippet={snippet.id} style={{ whiteSpace: 'pre', overflowX: 'auto', fontSize: 12 }}>
              {snippet.code}
            </Code>
          </Tabs.Panel>
        ))}
      </Tabs>
    </Paper>
  );
}
