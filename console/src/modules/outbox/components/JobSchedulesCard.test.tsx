import { screen, waitFor } from '@testing-library/react';
import { Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fakeGraphQL } from '../../../test/graphql';
import { renderUi } from '../../../test/render';
import { CurrentUserProvider, type CurrentUser } from '../../auth/hooks/useCurrentUser';
import { JobSchedulesCard } from './JobSchedulesCard';

const ADMIN = { role: 'COMPANY_ADMIN' } as CurrentUser;

/** The schedules endpoint: email-delivery is running for the first `runningAnswers` answers, then done. */
function server(runningAnswers: number) {
  const { client, sent } = fakeGraphQL(() => {
    const running = sent.length <= runningAnswers;
    const job = {
      __typename: 'JobSchedule', name: 'email-delivery', description: 'Email delivery', schedule: '* * * * *', timezone: 'UTC',
      lastRunAt: '2026-06-01T12:00:00.000Z', lastFinishedAt: running ? '2026-06-01T11:59:00.000Z' : '2026-06-01T12:00:02.000Z',
      nextRunAt: '2026-06-01T12:01:00.000Z', lastFailedAt: null, lastFailReason: null, running, canRunNow: true,
    };
    return { jobSchedules: [job] };
  });
  return { client, answers: () => sent.length };
}

describe('<JobSchedulesCard>', () => {
  it('follows a run in progress until it ends: "Run now" comes back on without a reload', async () => {
    const { client, answers } = server(2);
    renderUi(
      <Provider value={client}>
        <CurrentUserProvider user={ADMIN} company={null as never}>
          <JobSchedulesCard />
        </CurrentUserProvider>
      </Provider>,
    );
    const runNow = await screen.findByRole('button', { name: 'Run email-delivery now' });
    expect(runNow).toBeDisabled();
    expect(screen.getByText('running')).toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole('button', { name: 'Run email-delivery now' })).toBeEnabled(), { timeout: 5_000 });
    const settled = answers();
    // Nothing runs any more: it stops asking.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(answers()).toBe(settled);
  });
});
