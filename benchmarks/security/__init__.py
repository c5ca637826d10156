"""What keeps the dashboard's secrets and requests in bounds: endpoint secrets encrypted at rest
(vault) and the networks the dashboard may send requests to (outbound)."""
