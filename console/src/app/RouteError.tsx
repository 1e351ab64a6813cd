import { Button, Code, Group } from '@mantine/core';
import { Link, isRouteErrorResponse, useRouteError } from 'react-router';
import { EmptyState } from '../ui/QueryState';

/**
 * What a page shows when rendering it throws (a bug, or data of an unexpected shape): a way on instead of the
 * router's bare "Unexpected Application Error". The navigation around it keeps working.
 */
export function RouteError() {
  const error = useRouteError();
  const detail = isRouteErrorResponse(error) ? `${error.status} ${error.statusText}` : error instanceof Error ? error.message : String(error);
  return (
    <EmptyState
      title="This page could not be shown"
      action={
        <Group gap="sm">
          <Button variant="light" onClick={() => window.location.reload()}>
            Reload the page
          </Button>
          <Button component={Link} to="/" variant="subtle">
            Go to the dashboard
          </Button>
        </Group>
      }
    >
      Something unexpected happened while showing it. Reloading usually helps; if it keeps happening, tell your operator what you did and
      quote this: <Code>{detail}</Code>
    </EmptyState>
  );
}
