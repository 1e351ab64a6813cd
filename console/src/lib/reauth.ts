// Recent re-authentication (docs/security.md): an account-security mutation answers
// ReauthenticationRequired until the session confirmed its password (and second factor) within 10 minutes.
// useApiMutation asks here; the one ReauthModal mounted by the app shows the dialog and answers whether the session
// re-authenticated, and the mutation is then sent again. Concurrent asks share one dialog.

type Prompter = () => Promise<boolean>;

let prompter: Prompter | null = null;
let pending: Promise<boolean> | null = null;

/** Registers the dialog that asks for the password (ReauthModal); returns its unregistration. */
export function setReauthPrompter(next: Prompter): () => void {
  prompter = next;
  return () => {
    if (prompter === next) prompter = null;
  };
}

/** Asks the user to re-authenticate: true once the session did, false when they cancelled (or no dialog is mounted). */
export function requestReauth(): Promise<boolean> {
  if (!prompter) return Promise.resolve(false);
  pending ??= prompter().finally(() => {
    pending = null;
  });
  return pending;
}
