import { Anchor, Button, Group, Loader, Paper, Progress, Stack, Text, ThemeIcon, Title } from '@mantine/core';
import { useLocalStorage } from '@mantine/hooks';
import { IconCheck } from '@tabler/icons-react';
import { useEffect } from 'react';
import { Link } from 'react-router';
import { NEW_PARAM } from '../../../ui/useOpenFromLink';

export const INTEGRATE_SEEN_KEY = 'kf.onboarding.integrate-seen';
/** Every step done once (the checklist then says so). */
const COMPLETED_KEY = 'kf.onboarding.completed';
/** "Hide this checklist": the key's name predates COMPLETED_KEY, when hiding was the only way to end the checklist. */
const HIDDEN_KEY = 'kf.onboarding.done';

interface Progress {
  products: number;
  totalLicenses: number;
  activations: number;
}

export interface OnboardingStep {
  title: string;
  hint: string;
  done: boolean;
  to: string;
  action: string;
}

/** The first hour, in order: a product, a license, the application wired up, its first activation seen. */
export function onboardingSteps(stats: Progress, integrateSeen: boolean): OnboardingStep[] {
  const activated = stats.activations > 0;
  return [
    { title: 'Create a product', hint: 'What you sell: licenses belong to a product.', done: stats.products > 0, to: `/products?${NEW_PARAM}=1`, action: 'Add a product' },
    { title: 'Create a license', hint: 'Its key is shown once: copy it for the next step.', done: stats.totalLicenses > 0, to: `/licenses?${NEW_PARAM}=1`, action: 'Create a license' },
    { title: 'Integrate your application', hint: "Open a license and copy a snippet from its Integrate panel (curl or TypeScript).", done: integrateSeen || activated, to: '/licenses', action: 'Open a license' },
    { title: 'See the first activation', hint: 'Run the snippet: the activation shows up here within seconds.', done: activated, to: '/licenses', action: 'Open a license' },
  ];
}

/**
 * The steps until every one is done once; then it says so (whatever happens later) until hidden. Polls while waiting
 * for the first activation. Hiding it is for good, in this browser.
 */
export function OnboardingChecklist({ stats, onPoll }: { stats: Progress; onPoll: () => void }) {
  const [integrateSeen] = useLocalStorage({ key: INTEGRATE_SEEN_KEY, defaultValue: false });
  const [finished, setFinished] = useLocalStorage({ key: COMPLETED_KEY, defaultValue: false });
  const [hidden, setHidden] = useLocalStorage({ key: HIDDEN_KEY, defaultValue: false });
  const steps = onboardingSteps(stats, integrateSeen);
  const doneCount = steps.filter((step) => step.done).length;
  const waitingForActivation = steps[1].done && !steps[3].done;
  useEffect(() => {
    if (doneCount === steps.length) setFinished(true);
  }, [doneCount, steps.length, setFinished]);
  useEffect(() => {
    if (!waitingForActivation) return;
    const timer = setInterval(onPoll, 10_000);
    return () => clearInterval(timer);
  }, [waitingForActivation, onPoll]);
  if (hidden) return null;
  const hide = (
    <Anchor component="button" size="xs" c="dimmed" mt="sm" onClick={() => setHidden(true)}>
      Hide this checklist
    </Anchor>
  );
  if (finished) {
    return (
      <Paper p="lg" component="section" aria-label="Getting started">
        <Group wrap="nowrap" align="flex-start" gap="sm">
          <ThemeIcon radius="xl" size={28} color="teal" aria-hidden>
            <IconCheck size={16} />
          </ThemeIcon>
          <div>
            <Title order={3} size="h4">
              You are set up
            </Title>
            <Text size="sm" c="dimmed">
              A product, a license, your application integrated and its first activation seen: every getting-started step is done.
            </Text>
          </div>
        </Group>
        {hide}
      </Paper>
    );
  }
  const next = steps.find((step) => !step.done);

  return (
    <Paper p="lg" component="section" aria-label="Getting started">
      <Group justify="space-between" mb={4}>
        <Title order={3} size="h4">
          Getting started
        </Title>
        <Text size="sm" c="dimmed">
          {doneCount} of {steps.length} done
        </Text>
      </Group>
      <Progress value={(doneCount / steps.length) * 100} size="sm" mb="md" aria-hidden />
      <Stack gap="sm">
        {steps.map((step, index) => (
          <Group key={step.title} wrap="nowrap" align="flex-start" gap="sm" data-step-done={step.done}>
            <ThemeIcon radius="xl" size={24} variant={step.done ? 'filled' : 'light'} color={step.done ? 'teal' : 'gray'} aria-label={step.done ? 'done' : 'to do'}>
              {step.done ? <IconCheck size={14} /> : <Text size="xs">{index + 1}</Text>}
            </ThemeIcon>
            <div style={{ flex: 1 }}>
              <Text size="sm" fw={500} td={step.done ? 'line-through' : undefined} c={step.done ? 'dimmed' : undefined}>
                {step.title}
              </Text>
              {!step.done && (
                <Text size="xs" c="dimmed">
                  {step.hint}
                  {index === 3 && waitingForActivation && (
                    <>
                      {' '}
                      <Loader size={10} type="dots" display="inline-block" aria-label="Waiting for the first activation" />
                    </>
                  )}
                </Text>
              )}
            </div>
            {step === next && (
              <Button size="xs" variant="light" component={Link} to={step.to}>
                {step.action}
              </Button>
            )}
          </Group>
        ))}
      </Stack>
      {hide}
    </Paper>
  );
}
