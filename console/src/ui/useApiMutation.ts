import { useCallback } from 'react';
import { useMutation, type AnyVariables, type TypedDocumentNode } from 'urql';
import { errorCode, errorMessage, fieldErrors } from '../lib/errors';
import { requestReauth } from '../lib/reauth';
import { notifyError, notifySuccess } from './notify';

interface Options<Data> {
  /** Toast text on success (omit for none). */
  success?: string | ((data: Data) => string);
  /** Title of the error toast. */
  errorTitle?: string;
  /** The caller shows `fieldErrors` on its inputs itself: an error that has field errors is not toasted too. */
  showsFieldErrors?: boolean;
}

/** A form (@mantine/form) that shows the server's per-field errors on its inputs. */
export interface FieldErrorTarget {
  form: { setErrors: (errors: Record<string, string>) => void; values?: object };
  /** Server input name → form field, where they differ (e.g. expiresAt → expiresOn). */
  rename?: Record<string, string>;
}

/** The server's per-field errors (InvalidRequest `extensions.fields`) keyed by the form's field names. */
export function serverFieldErrors(fields: Record<string, string>, rename: Record<string, string> = {}): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).map(([field, message]) => [rename[field] ?? field.split('.')[0], message]));
}

/**
 * Runs a mutation with the console's standard feedback: a success toast, an error toast with the API's
 * message, `saving` while in flight (disable the submit button with it) and the server's per-field errors on a
 * form's inputs. An error shown on the form's inputs is said once: no toast as well (unless a field it names is
 * not one of the form's). Resolves to the data, or null when the mutation failed. What the mutation makes stale is
 * graphcache's business (lib/client.ts `updates`).
 */
export function useApiMutation<Data, Variables extends AnyVariables>(document: TypedDocumentNode<Data, Variables>, options: Options<Data> = {}) {
  const [state, execute] = useMutation<Data, Variables>(document);
  const { success, errorTitle, showsFieldErrors = false } = options;

  const run = useCallback(
    async (variables: Variables, target?: FieldErrorTarget): Promise<Data | null> => {
      let result = await execute(variables);
      // An account-security action from a session that has not re-authenticated lately: ask (ReauthModal), retry once.
      if (errorCode(result.error) === 'ReauthenticationRequired' && (await requestReauth())) result = await execute(variables);
      if (result.error || !result.data) {
        const fields = fieldErrors(result.error);
        let shownOnFields = showsFieldErrors && Object.keys(fields).length > 0;
        if (target && Object.keys(fields).length) {
          const errors = serverFieldErrors(fields, target.rename);
          target.form.setErrors(errors);
          const values = target.form.values;
          shownOnFields = !values || Object.keys(errors).every((field) => field in values);
        }
        if (!shownOnFields) notifyError(errorMessage(result.error) || 'No answer from the server.', errorTitle);
        return null;
      }
      if (success) notifySuccess(typeof success === 'function' ? success(result.data) : success);
      return result.data;
    },
    [execute, success, errorTitle, showsFieldErrors],
  );

  return { run, saving: state.fetching, error: state.error, fieldErrors: fieldErrors(state.error) };
}
