import { Paper, Text, Title } from '@mantine/core';
import { useQuery } from 'urql';
import { LineChart } from '../../../charts';
import { bucketLabel } from '../../../charts/buckets';
import { FloatingPoolQuery } from '../../floating/graphql/documents';
import { poolBucketFor, type Granularity } from '../ranges';

/** Floating (concurrent) pool consumption: peak sessions vs pool size. Hidden when no license floats. */
export function FloatingPoolChart({ granularity, from, to }: { granularity: Granularity; from: string; to: string }) {
  const bucket = poolBucketFor(granularity);
  const [{ data, error }] = useQuery({ query: FloatingPoolQuery, variables: { bucket, from, to } });
  const points = data?.floatingPoolConsumption ?? [];
  if (error || points.every((point) => point.poolSize === 0)) return null;
  return (
    <Paper p="lg" component="section" aria-label="Floating pool consumption">
      <Title order={3} size="h5">
        Floating pool consumption
      </Title>
      <Text size="xs" c="dimmed" mb="sm">
        Peak concurrent sessions vs floating seats, per {bucket.toLowerCase()}
      </Text>
      <LineChart
        label="Floating sessions in use vs pool size"
        labels={points.map((point) => bucketLabel(point.bucketStart, bucket))}
        series={[
          { label: 'Peak in use', data: points.map((point) => point.peakInUse), color: '#7950f2' },
          { label: 'Pool size', data: points.map((point) => point.poolSize), color: '#adb5bd' },
        ]}
        height={220}
      />
    </Paper>
  );
}
