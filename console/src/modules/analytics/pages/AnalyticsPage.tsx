import { Box, Grid, Group, LoadingOverlay, Paper, SegmentedControl, Table, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';
import { useQuery } from 'urql';
import { BarChart, DoughnutChart, LineChart } from '../../../charts';
import { bucketLabel } from '../../../charts/buckets';
import { formatNumber, plural } from '../../../lib/format';
import { PageHeader } from '../../../ui/PageHeader';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { FloatingPoolChart } from '../components/FloatingPoolChart';
import { AnalyticsQuery } from '../graphql/documents';
import { EXPIRY_BUCKETS, GRANULARITIES, parseGranularity, parseRange, RANGES, STATUS_BUCKETS, type AnalyticsRange } from '../ranges';

function ChartCard({ title, subtitle, children }: { title: string; subtitle?: string; children: ReactNode }) {
  return (
    <Paper p="lg" h="100%" component="section" aria-label={title}>
      <Title order={3} size="h5">
        {title}
      </Title>
      {subtitle && (
        <Text size="xs" c="dimmed" mb="sm">
          {subtitle}
        </Text>
      )}
      {children}
    </Paper>
  );
}

/** The page's choices, kept in the address. */
const PARAMS = ['range', 'granularity'] as const;

export function AnalyticsPage() {
  const { values: params, set: setParams } = useSearchFilters(PARAMS);
  const range = parseRange(params.range);
  const granularity = parseGranularity(params.granularity);
  const [result, reload] = useQuery({ query: AnalyticsQuery, variables: { range, granularity } });
  // Captions describe the data on screen: while another range loads, the old charts keep their own caption
  // under a loading overlay instead of showing the new range's name over the old numbers.
  const shown = (result.operation?.variables as { range?: AnalyticsRange } | undefined)?.range ?? range;
  const rangeLabel = RANGES.find((r) => r.value === shown)!.label.toLowerCase();
  const loading = result.fetching && result.data != null;

  return (
    <>
      <PageHeader
        title="Analytics"
        description="Activations, license mix and seat consumption (UTC)."
        actions={<SegmentedControl aria-label="Time range" data={RANGES} value={range} onChange={(value) => setParams({ range: value })} />}
      />
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {({ analytics }) => {
          const totalActivations = analytics.activationTrend.reduce((sum, bucket) => sum + bucket.activations, 0);
          const totalLicenses = STATUS_BUCKETS.reduce((sum, bucket) => sum + analytics.licensesByStatus[bucket.key], 0);
          return (
            <Box pos="relative" aria-busy={loading}>
              <LoadingOverlay visible={loading} zIndex={10} overlayProps={{ blur: 1, backgroundOpacity: 0.5 }} loaderProps={{ 'aria-label': 'Loading the selected range' } as object} />
              <Grid gutter="lg">
                <Grid.Col span={12}>
                  <Paper p="lg" component="section" aria-label="Activation trend">
                    <Group justify="space-between" mb="sm" wrap="wrap">
                      <div>
                        <Title order={3} size="h5">
                          Activation trend
                        </Title>
                        <Text size="xs" c="dimmed">
                          {plural(totalActivations, 'new activation')}, {rangeLabel}
                        </Text>
                      </div>
                      {analytics.granularity === 'HOUR' ? (
                        <Text size="xs" c="dimmed">
                          By hour (UTC)
                        </Text>
                      ) : (
                        <SegmentedControl size="xs" aria-label="Granularity" data={GRANULARITIES} value={granularity} onChange={(value) => setParams({ granularity: value })} />
                      )}
                    </Group>
                    <BarChart
                      label={`New activations per ${analytics.granularity.toLowerCase()}, ${rangeLabel}`}
                      labels={analytics.activationTrend.map((bucket) => bucketLabel(bucket.start, analytics.granularity))}
                      series={[{ label: 'Activations', data: analytics.activationTrend.map((bucket) => bucket.activations) }]}
                    />
                  </Paper>
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 4 }}>
                  <ChartCard title="Licenses by status" subtitle={`${plural(totalLicenses, 'license')}, now`}>
                    {totalLicenses === 0 ? (
                      <EmptyState title="No licenses yet" />
                    ) : (
                      <DoughnutChart label="Licenses by status" labels={STATUS_BUCKETS.map((b) => b.label)} values={STATUS_BUCKETS.map((b) => analytics.licensesByStatus[b.key])} colors={STATUS_BUCKETS.map((b) => b.color)} />
                    )}
                  </ChartCard>
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 4 }}>
                  <ChartCard title="Licenses by expiry" subtitle="Unrevoked licenses by time left">
                    {totalLicenses === 0 ? (
                      <EmptyState title="No licenses yet" />
                    ) : (
                      <DoughnutChart label="Licenses by expiry" labels={EXPIRY_BUCKETS.map((b) => b.label)} values={EXPIRY_BUCKETS.map((b) => analytics.licensesByExpiry[b.key])} colors={EXPIRY_BUCKETS.map((b) => b.color)} />
                    )}
                  </ChartCard>
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 4 }}>
                  <ChartCard title="Licenses by product" subtitle="Active and all licenses, now">
                    {analytics.licensesByProduct.length === 0 ? (
                      <EmptyState title="No products yet" />
                    ) : (
                      <BarChart
                        label="Licenses by product"
                        horizontal
                        height={240}
                        labels={analytics.licensesByProduct.map((p) => p.productName)}
                        series={[
                          { label: 'Active', data: analytics.licensesByProduct.map((p) => p.activeLicenses), color: '#12b886' },
                          { label: 'Other', data: analytics.licensesByProduct.map((p) => p.licenses - p.activeLicenses), color: '#ced4da' },
                        ]}
                        stacked
                      />
                    )}
                  </ChartCard>
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 5 }}>
                  <ChartCard title="Top products" subtitle={`By new activations, ${rangeLabel}`}>
                    {analytics.topProducts.length === 0 ? (
                      <EmptyState title="No activations in this range" />
                    ) : (
                      <Table>
                        <Table.Tbody>
                          {analytics.topProducts.map((product, index) => (
                            <Table.Tr key={product.productId} data-testid="top-product">
                              <Table.Td w={28} c="dimmed">
                                {index + 1}
                              </Table.Td>
                              <Table.Td>{product.productName}</Table.Td>
                              <Table.Td ta="right" fw={600}>
                                {formatNumber(product.activations)}
                              </Table.Td>
                            </Table.Tr>
                          ))}
                        </Table.Tbody>
                      </Table>
                    )}
                  </ChartCard>
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 7 }}>
                  <ChartCard title="Seat pool consumption" subtitle="Seats in use vs available, over time">
                    <LineChart
                      label={`Seats used and available, ${rangeLabel}`}
                      labels={analytics.seatPool.map((point) => bucketLabel(point.start, analytics.granularity))}
                      series={[
                        { label: 'Seats used', data: analytics.seatPool.map((point) => point.seatsUsed), color: '#4c6ef5' },
                        { label: 'Seats available', data: analytics.seatPool.map((point) => point.seatsAvailable), color: '#adb5bd' },
                      ]}
                      fill
                      height={240}
                    />
                  </ChartCard>
                </Grid.Col>
                <Grid.Col span={12}>
                  <FloatingPoolChart granularity={analytics.granularity} from={analytics.from} to={analytics.to} />
                </Grid.Col>
              </Grid>
            </Box>
          );
        }}
      </QueryState>
    </>
  );
}
