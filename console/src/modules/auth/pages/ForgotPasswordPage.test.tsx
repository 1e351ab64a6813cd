import { fireEvent, screen } from '@testing-library/react';
import { Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fakeGraphQL } from '../../../test/graphql';
import { renderUi } from '../../../test/render';
import { ForgotPasswordPage } from './ForgotPasswordPage';

const answered = async (mode: 'POSTMARK' | 'DEVELOPMENT', message: string) => {
  const { client, sent } = fakeGraphQL(() => ({ requestPasswordReset: { message, emailDeliveryMode: mode } }));
  renderUi(
    <Provider value={client}>
      <ForgotPasswordPage />
    </Provider>,
    { route: '/forgot-password?email=ada@acme.test' },
  );
  fireEvent.click(screen.getByRole('button', { name: 'Email me a link' }));
  return sent;
};

describe('forgot password page', () => {
  it('with a mail provider: check your email', async () => {
    const sent = await answered('POSTMARK', 'If ada@acme.test belongs to an account, a link to choose a new password is on its way.');
    expect(await screen.findByText('Check your email')).toBeTruthy();
    expect(screen.getByText(/Check the spam folder/)).toBeTruthy();
    expect(sent).toEqual([{ email: 'ada@acme.test' }]);
  });

  it('without one: no "check your email"; where the link is kept and who can read it', async () => {
    await answered('DEVELOPMENT', "If ada@acme.test belongs to an account, a link to choose a new password is kept in this server's email outbox.");
    expect(await screen.findByText('No email is sent')).toBeTruthy();
    expect(screen.getByText(/kept in this server's email outbox/)).toBeTruthy();
    expect(screen.getByText(/An admin of your company can open it on the Emails page/)).toBeTruthy();
    expect(screen.getByText('pnpm cli outbox:list --kind password-reset --body')).toBeTruthy();
    expect(screen.queryByText('Check your email')).toBeNull();
    expect(screen.queryByText(/spam/)).toBeNull();
  });
});
