import { notifications } from '@mantine/notifications';

/** Success and failure toasts: the only way the console reports the outcome of an action. */
export const notifySuccess = (message: string) => notifications.show({ color: 'teal', title: 'Done', message, autoClose: 4000 });

export const notifyError = (message: string, title = 'That did not work') =>
  notifications.show({ color: 'red', title, message, autoClose: 8000 });
