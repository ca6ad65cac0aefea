"""Model providers: the ProviderStream actor and the adapters it drives (scripted for now)."""
