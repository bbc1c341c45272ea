// SPDX-License-Identifier: MIT
// Version 1 of the deposit forwarder (frozen: its bytecode decides the addresses already handed out, so it never changes): the code every v1 deposit address runs through an EIP-1167 clone.
pragma solidity 0.8.37;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice One implementation, deployed by the factory; each deposit address is a clone that delegates here.
/// Both fields are immutables (in this contract's code, not in a clone's storage): a clone needs no
/// initialisation, so deploying one costs only the 45-byte proxy, and nothing can ever change them.
contract DepositForwarder {
    using SafeERC20 for IERC20;

    /// The only caller allowed to move funds: the factory that deployed this implementation.
    address public immutable factory;
    /// The only place funds go: the factory's owner (the hot wallet), fixed when the factory was deployed.
    address public immutable destination;

    error OnlyFactory();
    error NativeTransferFailed();

    constructor(address destination_) {
        factory = msg.sender;
        destination = destination_;
    }

    /// Accepts the native coin and does nothing else: forwarding here would make the payer pay for
    /// the move (and fail senders that give a transfer the bare 21000 gas); the batch flush moves it.
    receive() external payable {}

    /// Moves this address's whole native balance and, unless `token` is zero, its whole balance of
    /// `token` to the destination. Nothing to move is not an error, so a second flush is harmless.
    /// SafeERC20 accepts tokens whose transfer returns no boolean (USDT on Ethereum).
    function flush(address token) external returns (uint256 tokenAmount, uint256 nativeAmount) {
        if (msg.sender != factory) revert OnlyFactory();
        nativeAmount = address(this).balance;
        if (nativeAmount > 0) {
            (bool sent,) = destination.call{value: nativeAmount}("");
            if (!sent) revert NativeTransferFailed();
        }
        if (token != address(0)) {
            tokenAmount = IERC20(token).balanceOf(address(this));
            if (tokenAmount > 0) IERC20(token).safeTransfer(destination, tokenAmount);
        }
    }
}
