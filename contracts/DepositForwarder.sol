// SPDX-License-Identifier: MIT
// The code every deposit address runs (version 2, through an EIP-1167 clone): it keeps what it receives until its factory empties it, and it can send only to one fixed destination.
pragma solidity 0.8.37;

/// @notice One implementation, deployed by the factory; each deposit address is a clone that delegates here.
/// Both fields are immutables (in this contract's code, not in a clone's storage): a clone needs no
/// initialisation, so deploying one costs only the 45-byte proxy, and nothing can ever change them.
contract DepositForwarder {
    /// The only caller allowed to move funds: the factory that deployed this implementation.
    address public immutable factory;
    /// The only place funds go: the factory's owner (the hot wallet), fixed when the factory was deployed.
    address public immutable destination;

    error OnlyFactory();
    error NativeTransferFailed();
    error TokenTransferFailed();

    constructor(address destination_) {
        factory = msg.sender;
        destination = destination_;
    }

    /// Accepts the native coin and does nothing else: forwarding here would make the payer pay for
    /// the move (and fail senders that give a transfer the bare 21000 gas); the batch flush moves it.
    receive() external payable {}

    /// Moves this address's whole native balance and, unless `token` is zero, its whole balance of
    /// `token` to the destination; answers the native amount (a token's move is its own Transfer log).
    /// Nothing to move is not an error, so a second flush is harmless.
    function flush(address token) external returns (uint256 nativeAmount) {
        if (msg.sender != factory) revert OnlyFactory();
        nativeAmount = address(this).balance;
        if (nativeAmount > 0) {
            (bool sent,) = destination.call{value: nativeAmount}("");
            if (!sent) revert NativeTransferFailed();
        }
        if (token != address(0)) moveToken(token);
    }

    /// balanceOf then transfer, in assembly: a token whose transfer returns nothing (USDT on Ethereum)
    /// is accepted, as is one that returns true; a revert or false reverts the flush (FlushFailed).
    function moveToken(address token) private {
        address to = destination;
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            mstore(ptr, 0x70a0823100000000000000000000000000000000000000000000000000000000)
            mstore(add(ptr, 4), address())
            // Yul evaluates arguments right to left: the call runs before returndatasize() is read.
            if iszero(and(gt(returndatasize(), 31), staticcall(gas(), token, ptr, 36, 0, 32))) {
                mstore(0, 0x045c4b0200000000000000000000000000000000000000000000000000000000)
                revert(0, 4)
            }
            let amount := mload(0)
            if amount {
                mstore(ptr, 0xa9059cbb00000000000000000000000000000000000000000000000000000000)
                mstore(add(ptr, 4), to)
                mstore(add(ptr, 36), amount)
                let ok := call(gas(), token, 0, ptr, 68, 0, 32)
                // Success is a call that did not revert and returned nothing (from a contract) or a word 1.
                switch returndatasize()
                case 0 { ok := and(ok, gt(extcodesize(token), 0)) }
                default { ok := and(ok, and(gt(returndatasize(), 31), eq(mload(0), 1))) }
                if iszero(ok) {
                    mstore(0, 0x045c4b0200000000000000000000000000000000000000000000000000000000)
                    revert(0, 4)
                }
            }
        }
    }
}
