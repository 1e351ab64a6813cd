import { Select, type SelectProps } from '@mantine/core';

export type Role = 'COMPANY_ADMIN' | 'READ_ONLY';

export const ROLE_OPTIONS: { value: Role; label: string }[] = [
  { value: 'COMPANY_ADMIN', label: 'Admin — manages everything' },
  { value: 'READ_ONLY', label: 'Read-only — sees everything, changes nothing' },
];

export const roleLabel = (role: Role) => (role === 'COMPANY_ADMIN' ? 'Admin' : 'Read-only');

export function RoleSelect({ value, onChange, ...props }: Omit<SelectProps, 'data' | 'value' | 'onChange'> & { value: Role; onChange: (role: Role) => void }) {
  return <Select label="Role" data={ROLE_OPTIONS} value={value} allowDeselect={false} onChange={(next) => next && onChange(next as Role)} {...props} />;
}
