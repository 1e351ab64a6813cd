import { useForm, type UseFormReturnType } from '@mantine/form';
import { zod4Resolver } from 'mantine-form-zod-resolver';
import type { z } from 'zod';

/**
 * A dialog's form (@mantine/form) checked by a zod schema: a field's problem shows when the user leaves it after
 * changing it, and all of them on submit; the values stay as typed (a `-3` is kept and explained, never clamped). Server field
 * errors are put on the inputs by useApiMutation's `run(variables, { form })`.
 */
export function useZodForm<Values extends Record<string, any>>(schema: z.ZodType<unknown>, initialValues: Values): UseFormReturnType<Values> {
  const resolve = zod4Resolver(schema);
  return useForm<Values>({
    mode: 'controlled',
    initialValues,
    validate: (values) => resolve(values),
    // A field is checked when the user leaves it having changed it (not merely for passing through it), and every
    // field on submit.
    enhanceGetInputProps: ({ field, form }) => ({
      onBlur: () => {
        if (form.isDirty(field)) form.validateField(field);
      },
    }),
  });
}
