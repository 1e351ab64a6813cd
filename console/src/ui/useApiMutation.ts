import { useCallback } from 'react';
import { useMutation, type AnyVariables, type TypedDocumentNode } from 'urql';
import { errorMessage, fieldErrors } from '../lib/errors';
import { notifyError, notifySuccess } from './notify';

interface Options<Data> {
  /** Toast text on success (omit for none). */
  success?: string | ((data: Data) => string);
  /** Title of the error toast. */
  errorTitle?: string;
}

/**
 * Runs a mutation with the console's standard feedback: a success toast, an error toast with the API's
 * message, `saving` while in flight (disable the submit button with it) and per-field errors for forms.
 * Resolves to the data, or null when the mutation failed.
 */
export function useApiMutation<Data, Variables extends AnyVariables>(document: TypedDocumentNode<Data, Variables>, options: Options<Data> = {}) {
  const [state, execute] = useMutation<Data, Variables>(document);
  const { success, errorTitle } = options;

  const run = useCallback(
    async (variables: Variables): Promise<Data | null> => {
      // What the mutation makes stale is graphcache's business (lib/client.ts `updates`).
      const result = await execute(variables);
      if (result.error || !result.data) {
        notifyError(errorMessage(result.error) || 'No answer from the server.', errorTitle);
        return null;
      }
      if (success) notifySuccess(typeof success === 'function' ? success(result.data) : success);
      return result.data;
    },
    [execute, success, errorTitle],
  );

  return { run, saving: state.fetching, error: state.error, fieldErrors: fieldErrors(state.error) };
}
