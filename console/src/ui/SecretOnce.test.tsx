import { fireEvent, screen, within } from '@testing-library/react';
import { useState } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { renderUi } from '../test/render';
import { SecretOnceModal } from './SecretOnce';

function Harness({ onDone }: { onDone?: () => void }) {
  const [secret, setSecret] = useState<string | null>('kf_live_abc123');
  return <SecretOnceModal secret={secret} title="Your new API key" label="API key" onClose={() => setSecret(null)} done={onDone && { label: 'Open it', onClick: onDone }} />;
}

describe('<SecretOnceModal>', () => {
  it('shows the secret once with a copy button; only a button closes it (not Escape nor a click outside)', async () => {
    renderUi(<Harness />);
    const dialog = await screen.findByRole('dialog', { name: 'Your new API key' });
    expect(within(dialog).getByTestId('secret-value')).toHaveTextContent('kf_live_abc123');
    expect(within(dialog).getByRole('button', { name: 'Copy API key' })).toBeInTheDocument();
    expect(within(dialog).getByText('This is the only time the API key is shown. Only a short hint is kept.')).toBeInTheDocument();
    fireEvent.keyDown(dialog, { key: 'Escape' });
    expect(screen.getByRole('dialog', { name: 'Your new API key' })).toBeInTheDocument();
    fireEvent.click(within(dialog).getByRole('button', { name: 'I have stored it' }));
    expect(screen.queryByTestId('secret-value')).toBeNull();
  });

  it('its main button can be another action', async () => {
    const onDone = vi.fn();
    renderUi(<Harness onDone={onDone} />);
    fireEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Open it' }));
    expect(onDone).toHaveBeenCalledOnce();
  });
});
