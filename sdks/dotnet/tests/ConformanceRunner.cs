namespace Keyforge.Tests { static class Runner { static int Main() { return 0; } } }
