import { fuzzMutationsHalf } from './support/fuzz-graphql-mutations.js';

// The second half of the mutations under hostile variables (the list and the first half: fuzz-graphql-mutations).
fuzzMutationsHalf(1);
