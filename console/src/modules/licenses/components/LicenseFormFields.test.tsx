import { fireEvent, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../../../test/render';
import { useZodForm } from '../../../ui/useZodForm';
import { EMPTY_LICENSE_FORM, licenseFormSchema, type LicenseForm } from '../licenseForm';
import { LicenseFormFields } from './LicenseFormFields';

function Harness({ initial }: { initial: LicenseForm }) {
  const form = useZodForm<LicenseForm>(licenseFormSchema({ requireProduct: false }), initial);
  return <LicenseFormFields form={form} />;
}

describe('license form fields', () => {
  it('keeps a negative number as typed and says what is wrong, instead of silently changing it', () => {
    renderUi(<Harness initial={{ ...EMPTY_LICENSE_FORM, floatingSeats: 2 }} />);
    const cases: [string, string][] = [
      ['Max activations', 'At least 1.'],
      ['Floating seats', 'At least 1, or leave empty for none.'],
      ['Offline grace (days)', '0 or more, or leave empty for no offline use.'],
      ['Grace after expiry (days)', '0 or more, or leave empty for none.'],
    ];
    for (const [label, message] of cases) {
      const input = screen.getByLabelText(label, { exact: false }) as HTMLInputElement;
      fireEvent.change(input, { target: { value: '-3' } });
      fireEvent.blur(input);
      expect(input.value, label).toBe('-3');
      expect(screen.getByText(message)).toBeTruthy();
    }
  });
});
