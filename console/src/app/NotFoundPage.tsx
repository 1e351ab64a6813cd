import { Button } from '@mantine/core';
import { Link } from 'react-router';
import { EmptyState } from '../ui/QueryState';

export function NotFoundPage() {
  return (
    <EmptyState
      title="Page not found"
      action={
        <Button component={Link} to="/" variant="light">
          Go to the dashboard
        </Button>
      }
    >
      The address may be mistyped, or the page has moved.
    </EmptyState>
  );
}
