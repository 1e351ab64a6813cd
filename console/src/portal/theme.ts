import { colorsTuple, createTheme, type CSSVariablesResolver } from '@mantine/core';
import { MENU_DEFAULTS, MODAL_DEFAULTS } from '../ui/overlay-defaults';

/**
 * The portal's theme: the console's type and shapes in the vendor's accent colour (#rrggbb; the default blue
 * without one). autoContrast picks dark or light text on filled accent buttons, so a light accent stays readable.
 */
export function portalTheme(accent: string | null) {
  const valid = accent && /^#[0-9a-f]{6}$/i.test(accent) ? accent : null;
  return createTheme({
    primaryColor: valid ? 'accent' : 'blue',
    ...(valid && { colors: { accent: colorsTuple(valid) } }),
    primaryShade: valid ? 6 : 7,
    autoContrast: true,
    respectReducedMotion: true,
    defaultRadius: 'md',
    fontFamily: 'Inter, system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
    headings: { fontWeight: '650' },
    components: { Paper: { defaultProps: { withBorder: true, radius: 'md' } }, Menu: MENU_DEFAULTS, Modal: MODAL_DEFAULTS },
  });
}

/** Dimmed text one shade darker than Mantine's: readable (WCAG AA) on the portal's light grey page. */
export const portalCssVariables: CSSVariablesResolver = () => ({ variables: {}, light: { '--mantine-color-dimmed': 'var(--mantine-color-gray-7)' }, dark: {} });
