import { act, screen } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { renderUi } from '../../../test/render';
import { INTEGRATE_SEEN_KEY, OnboardingChecklist } from './OnboardingChecklist';

const stats = (products: number, totalLicenses: number, activations: number) => ({ products, totalLicenses, activations });

describe('getting-started checklist', () => {
  beforeEach(() => localStorage.clear());
  afterEach(() => vi.useRealTimers());

  it('an empty company starts at step 1 with a button to it', () => {
    renderUi(<OnboardingChecklist stats={stats(0, 0, 0)} onPoll={() => undefined} />);
    expect(screen.getByText('0 of 4 done')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Add a product' }).getAttribute('href')).toBe('/products?new=1');
  });

  it('after a product and a license it points at a license to integrate, and polls for the first activation', () => {
    vi.useFakeTimers();
    const onPoll = vi.fn();
    renderUi(<OnboardingChecklist stats={stats(1, 1, 0)} onPoll={onPoll} />);
    expect(screen.getByText('2 of 4 done')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Open a license' }).getAttribute('href')).toBe('/licenses');
    act(() => vi.advanceTimersByTime(25_000));
    expect(onPoll).toHaveBeenCalledTimes(2);
  });

  it('a copied snippet counts as integrated', () => {
    localStorage.setItem(INTEGRATE_SEEN_KEY, 'true');
    renderUi(<OnboardingChecklist stats={stats(1, 1, 0)} onPoll={() => undefined} />);
    expect(screen.getByText('3 of 4 done')).toBeTruthy();
  });

  it('"Create a license" opens the form (the page reads ?new=1)', () => {
    renderUi(<OnboardingChecklist stats={stats(1, 0, 0)} onPoll={() => undefined} />);
    expect(screen.getByRole('link', { name: 'Create a license' }).getAttribute('href')).toBe('/licenses?new=1');
  });

  it('once everything is done it says so (even if the only activation is released later), until hidden for good', () => {
    const { unmount } = renderUi(<OnboardingChecklist stats={stats(1, 1, 1)} onPoll={() => undefined} />);
    expect(screen.getByText('You are set up')).toBeTruthy();
    expect(screen.queryByText('Getting started')).toBeNull();
    unmount();
    const again = renderUi(<OnboardingChecklist stats={stats(1, 1, 0)} onPoll={() => undefined} />);
    expect(screen.getByText('You are set up')).toBeTruthy();
    act(() => screen.getByRole('button', { name: 'Hide this checklist' }).click());
    expect(screen.queryByText('You are set up')).toBeNull();
    again.unmount();
    renderUi(<OnboardingChecklist stats={stats(1, 1, 1)} onPoll={() => undefined} />);
    expect(screen.queryByText('You are set up')).toBeNull();
  });

  it('hiding the unfinished checklist hides it for good', () => {
    renderUi(<OnboardingChecklist stats={stats(0, 0, 0)} onPoll={() => undefined} />);
    act(() => screen.getByRole('button', { name: 'Hide this checklist' }).click());
    expect(screen.queryByText('Getting started')).toBeNull();
  });
});
