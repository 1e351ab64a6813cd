import { screen } from '@testing-library/react';
import { CombinedError } from 'urql';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../test/render';
import { QueryState } from './QueryState';

const graphQLError = (code: string, message: string) => new CombinedError({ graphQLErrors: [{ message, extensions: { code } }] });

describe('QueryState', () => {
  it('a Forbidden answer shows why, instead of rendering partial data', () => {
    // What the API answers a read-only member for an admin query: data with the refused field null.
    const result = { data: { emails: null } as { emails: { nodes: string[] } | null }, fetching: false, error: graphQLError('Forbidden', 'This needs the CompanyAdmin role.') };
    renderUi(<QueryState result={result}>{(data) => <p>{data.emails!.nodes.length} emails</p>}</QueryState>);
    expect(screen.getByText('This needs the CompanyAdmin role')).toBeTruthy();
    expect(screen.queryByText(/emails$/)).toBeNull();
  });

  it('data that came with another GraphQL error is partial: the error is shown, not the content', () => {
    const result = { data: { license: null } as { license: { id: string } | null }, fetching: false, error: graphQLError('NotFound', 'License not found.') };
    renderUi(<QueryState result={result}>{(data) => <p>license {data.license!.id}</p>}</QueryState>);
    expect(screen.getByRole('alert').textContent).toContain('License not found.');
  });

  it('a refetch that cannot reach the server keeps the stale data visible under a notice', () => {
    const result = { data: { count: 3 }, fetching: false, error: new CombinedError({ networkError: new Error('Failed to fetch') }) };
    renderUi(<QueryState result={result}>{(data) => <p>{data.count} items</p>}</QueryState>);
    expect(screen.getByText('3 items')).toBeTruthy();
    expect(screen.getByRole('alert').textContent).toContain('Could not refresh');
  });
});
