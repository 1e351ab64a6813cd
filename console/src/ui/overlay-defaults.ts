import type { MenuProps, ModalProps } from '@mantine/core';

/**
 * Theme defaults for the menus and dialogs of the console and the portal (every one is checked by axe-core in the
 * end-to-end tests, test/support/axe.ts).
 *
 * Menus: Mantine puts a focusable `<div tabindex="-1">` inside the `role="menu"` to hold focus on open, but a menu
 * may only own menu items, groups and separators (WAI-ARIA; axe-core's aria-required-children, critical), so focus
 * goes to the first item instead, as the WAI-ARIA menu pattern has it.
 */
export const MENU_DEFAULTS: { defaultProps: Partial<MenuProps> } = { defaultProps: { withInitialFocusPlaceholder: false } };

/**
 * Dialogs: Mantine's close button is an icon with no name; it is announced as "Close dialog" (distinct from a dialog's
 * own "Close" button).
 */
export const MODAL_DEFAULTS: { defaultProps: Partial<ModalProps> } = { defaultProps: { closeButtonProps: { 'aria-label': 'Close dialog' } } };
