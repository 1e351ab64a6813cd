import { act, renderHook } from '@testing-library/react';
import type { ReactNode } from 'react';
import { Client, fetchExchange, gql, Provider } from 'urql';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { notifyError } from './notify';
import { useApiMutation } from './useApiMutation';

vi.mock('./notify', () => ({ notifyError: vi.fn(), notifySuccess: vi.fn() }));

const Mutation = gql`
  mutation Save($name: String!) {
    save(name: $name) {
      id
    }
  }
`;

/** A GraphQL endpoint answering every call with `body`. */
const clientAnswering = (body: unknown) =>
  new Client({ url: 'http://console.test/graphql', exchanges: [fetchExchange], fetch: async () => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } }) });
const refusal = (code: string, message: string, fields?: Record<string, string>) => ({ data: null, errors: [{ message, extensions: { code, ...(fields && { fields }) } }] });

function hook(body: unknown, options: Parameters<typeof useApiMutation>[1] = {}) {
  const client = clientAnswering(body);
  const wrapper = ({ children }: { children: ReactNode }) => <Provider value={client}>{children}</Provider>;
  return renderHook(() => useApiMutation(Mutation, options), { wrapper }).result;
}

describe('useApiMutation error feedback: said once', () => {
  beforeEach(() => vi.mocked(notifyError).mockClear());

  it('an error the form shows on its input (a duplicate name) is not toasted as well', async () => {
    const result = hook(refusal('Conflict', 'A product named "Editor" already exists.', { name: 'Another product already has this name.' }));
    const form = { values: { name: 'Editor', bundleMemberIds: [] }, setErrors: vi.fn() };
    await act(async () => void (await result.current.run({ name: 'Editor' }, { form })));
    expect(form.setErrors).toHaveBeenCalledWith({ name: 'Another product already has this name.' });
    expect(notifyError).not.toHaveBeenCalled();
  });

  it('a field error for a field the form does not have is toasted (never lost)', async () => {
    const result = hook(refusal('InvalidRequest', 'productId is not a product of yours', { productId: 'unknown product' }));
    const form = { values: { name: 'x' }, setErrors: vi.fn() };
    await act(async () => void (await result.current.run({ name: 'x' }, { form })));
    expect(notifyError).toHaveBeenCalledWith('productId is not a product of yours', undefined);
  });

  it('a caller that shows fieldErrors itself (the MFA code input) gets no toast for them; an error without fields is toasted', async () => {
    const wrongCode = hook(refusal('InvalidRequest', 'The code does not match.', { code: 'This code does not match.' }), { showsFieldErrors: true });
    await act(async () => void (await wrongCode.current.run({ name: 'x' })));
    expect(wrongCode.current.fieldErrors).toEqual({ code: 'This code does not match.' });
    expect(notifyError).not.toHaveBeenCalled();

    const other = hook(refusal('Forbidden', 'Only admins may do this.'), { showsFieldErrors: true });
    await act(async () => void (await other.current.run({ name: 'x' })));
    expect(notifyError).toHaveBeenCalledWith('Only admins may do this.', undefined);
  });

  it('without a form, an error is toasted', async () => {
    const result = hook(refusal('Conflict', 'A product named "Editor" already exists.', { name: 'Another product already has this name.' }));
    await act(async () => void (await result.current.run({ name: 'Editor' })));
    expect(notifyError).toHaveBeenCalledTimes(1);
  });
});
