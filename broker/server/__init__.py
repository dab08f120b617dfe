"""The broker: remoting server, request processors and the services behind them."""
