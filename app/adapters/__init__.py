"""Mail-server protocol adapters: each a pure codec under a thin asyncio transport."""
