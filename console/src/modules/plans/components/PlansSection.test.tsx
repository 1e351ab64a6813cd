import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fakeGraphQL } from '../../../test/graphql';
import { renderUi } from '../../../test/render';
import { planInput } from './PlanFormModal';
import { describePeriod, PlansSection } from './PlansSection';

const plan = (fields: Record<string, unknown>) => ({
  __typename: 'Plan',
  product: { __typename: 'ProductRef', id: 'p1', name: 'Studio' },
  duration: 'P1Y',
  maxActivations: 3,
  isTrial: false,
  nodeLocked: false,
  offlineGraceDays: null,
  gracePeriodDays: null,
  features: [],
  maintenancePeriod: null,
  floatingSeats: null,
  archived: false,
  licenseCount: 0,
  ...fields,
});

describe('plans on the products page', () => {
  it('reads periods as words and sends empty periods and counts as null (perpetual, none)', () => {
    expect(describePeriod('P1Y6M')).toBe('1 year 6 months');
    expect(describePeriod('P30D')).toBe('30 days');
    expect(describePeriod(null)).toBe('Perpetual');
    const form = { productId: 'p1', name: ' Pro ', duration: 'p1y', maxActivations: 3, floatingSeats: '' as const, gracePeriodDays: 5, offlineGraceDays: '' as const, maintenancePeriod: '', features: ['pro'], isTrial: false, nodeLocked: true };
    expect(planInput(form)).toEqual({ name: 'Pro', duration: 'P1Y', maxActivations: 3, floatingSeats: null, gracePeriodDays: 5, offlineGraceDays: null, maintenancePeriod: null, features: ['pro'], isTrial: false, nodeLocked: true });
  });

  it('lists plans; deleting one asks for confirmation, a plan with licenses cannot be deleted (archive it)', async () => {
    const { client, sent } = fakeGraphQL((variables) =>
      'filter' in variables
        ? { plans: { __typename: 'PlanConnection', totalCount: 2, nodes: [plan({ id: 'a', name: 'Pro yearly', licenseCount: 2 }), plan({ id: 'b', name: 'Basic', duration: null })] } }
        : { deletePlan: { __typename: 'DeletePlanPayload', deletedPlanId: 'b' } },
    );
    renderUi(
      <Provider value={client}>
        <PlansSection products={[{ id: 'p1', name: 'Studio' }]} canManage />
      </Provider>,
    );
    const rows = await screen.findAllByTestId('plan-row');
    expect(rows).toHaveLength(2);
    expect(within(rows[0]).getByText('1 year')).toBeTruthy();
    expect(within(rows[1]).getByText('Perpetual')).toBeTruthy();
    expect((within(rows[0]).getByRole('button', { name: 'Delete' }) as HTMLButtonElement).disabled).toBe(true);

    fireEvent.click(within(rows[1]).getByRole('button', { name: 'Delete' }));
    fireEvent.click(await screen.findByRole('button', { name: 'Delete plan' }));
    await waitFor(() => expect(sent.some((variables) => variables.id === 'b')).toBe(true));
  });
});
