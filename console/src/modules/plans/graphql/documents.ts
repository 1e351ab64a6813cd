import { graphql, type ResultOf } from '../../../graphql';

export const PlansQuery = graphql(`
  query Plans($filter: PlanFilter) {
    plans(filter: $filter) {
      totalCount
      nodes {
        id
        name
        product {
          id
          name
        }
        duration
        maxActivations
        isTrial
        nodeLocked
        offlineGraceDays
        gracePeriodDays
        features
        maintenancePeriod
        floatingSeats
        archived
        licenseCount
      }
    }
  }
`);

export type Plan = ResultOf<typeof PlansQuery>['plans']['nodes'][number];

export const CreatePlanMutation = graphql(`
  mutation CreatePlan($input: CreatePlanInput!) {
    createPlan(input: $input) {
      plan {
        id
        name
      }
    }
  }
`);

export const UpdatePlanMutation = graphql(`
  mutation UpdatePlan($input: UpdatePlanInput!) {
    updatePlan(input: $input) {
      plan {
        id
        name
        archived
      }
    }
  }
`);

export const DeletePlanMutation = graphql(`
  mutation DeletePlan($id: ID!) {
    deletePlan(input: { id: $id }) {
      deletedPlanId
    }
  }
`);
