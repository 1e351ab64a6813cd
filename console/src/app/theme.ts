import { createTheme, type CSSVariablesResolver } from '@mantine/core';
import { MENU_DEFAULTS, MODAL_DEFAULTS } from '../ui/overlay-defaults';

export const theme = createTheme({
  primaryColor: 'indigo',
  // Text on filled buttons and badges reaches WCAG AA (4.5:1): shade 8 of each colour, and dark text on the fills
  // that stay light at that shade (yellow, orange, green, teal).
  primaryShade: 8,
  autoContrast: true,
  luminanceThreshold: 0.2,
  respectReducedMotion: true,
  defaultRadius: 'md',
  fontFamily: 'Inter, system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
  headings: { fontWeight: '650' },
  components: {
    Table: { defaultProps: { verticalSpacing: 'sm', highlightOnHover: true } },
    Paper: { defaultProps: { withBorder: true, radius: 'md' } },
    Menu: MENU_DEFAULTS,
    Modal: MODAL_DEFAULTS,
    // A file field's "Choose a file" reads as its button: full contrast, not a placeholder's grey.
    FileInput: { styles: { placeholder: { color: 'var(--mantine-color-gray-7)' } } },
  },
});

/**
 * Text colours that reach WCAG AA (4.5:1) where Mantine's do not: dimmed text (gray 6 is 3.3:1 on white, as the
 * portal also corrects), red text (red 8 is at the limit), and the text of light alerts and badges in yellow, orange,
 * green and teal (their shade 8 is under 4.5:1 on its own tint; any yellow shade is under 3:1).
 */
export const cssVariablesResolver: CSSVariablesResolver = () => ({
  variables: {},
  light: {
    '--mantine-color-dimmed': 'var(--mantine-color-gray-7)',
    '--mantine-color-red-text': 'var(--mantine-color-red-9)',
    '--mantine-color-yellow-light-color': '#805300',
    '--mantine-color-orange-light-color': '#9a3412',
    '--mantine-color-green-light-color': '#1e6b30',
    '--mantine-color-teal-light-color': '#06694a',
  },
  dark: {},
});
