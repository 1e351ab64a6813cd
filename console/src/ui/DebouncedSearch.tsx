import { TextInput, type TextInputProps } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { IconSearch } from '@tabler/icons-react';
import { useEffect, useState } from 'react';

/** A text filter that reports its value 300 ms after typing stops. */
export function DebouncedSearch({ value, onSearch, ...props }: Omit<TextInputProps, 'value' | 'onChange'> & { value: string; onSearch: (value: string) => void }) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const report = useDebouncedCallback(onSearch, 300);
  return (
    <TextInput
      leftSection={<IconSearch size={16} />}
      value={text}
      onChange={(event) => {
        setText(event.currentTarget.value);
        report(event.currentTarget.value.trim());
      }}
      {...props}
    />
  );
}
