import { createTheme } from '@mantine/core';
import { MENU_DEFAULTS, MODAL_DEFAULTS } from '../ui/overlay-defaults';

export const theme = createTheme({
  primaryColor: 'indigo',
  respectReducedMotion: true,
  defaultRadius: 'md',
  fontFamily: 'Inter, system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
  headings: { fontWeight: '650' },
  components: {
    Table: { defaultProps: { verticalSpacing: 'sm', highlightOnHover: true } },
    Paper: { defaultProps: { withBorder: true, radius: 'md' } },
    Menu: MENU_DEFAULTS,
    Modal: MODAL_DEFAULTS,
  },
});
