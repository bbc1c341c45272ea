// SPDX-License-Identifier: MIT
// Version 1 of the forwarder factory (frozen: its bytecode decides the addresses already handed out, so it never changes): CREATE2 clones of one DepositForwarder, deployed and emptied in batches by the hot wallet alone.
pragma solidity 0.8.37;

import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {DepositForwarder} from "./DepositForwarder.sol";

/// @notice Deployed through the deterministic deployment proxy with the hot wallet as `owner`, so it
/// (and every deposit address) has one address on every EVM network for that hot wallet.
contract DepositForwarderFactory {
    /// The most forwarders one flush may touch: keeps a batch well inside a block's gas limit.
    uint256 public constant MAX_BATCH = 100;

    /// The hot wallet: the only caller of flush, and the only destination of funds.
    address public immutable owner;
    /// The DepositForwarder every clone delegates to (the factory's first CREATE, nonce 1).
    address public immutable implementation;

    /// `token` zero is the native coin. Emitted from the factory so one receipt tells what each deposit address gave.
    event Flushed(address indexed forwarder, address indexed token, uint256 amount);
    /// A forwarder whose flush reverted (e.g. a token that blocks it): the rest of the batch still moves.
    event FlushFailed(address indexed forwarder, address indexed token);

    error OnlyOwner();
    error ZeroOwner();
    error BadBatch();

    constructor(address owner_) {
        if (owner_ == address(0)) revert ZeroOwner();
        owner = owner_;
        implementation = address(new DepositForwarder(owner_));
    }

    /// The CREATE2 salt of deposit `id` (derived from the invoice): bound to the owner too, so the
    /// same id under another hot wallet is another address.
    function saltOf(bytes32 id) public view returns (bytes32) {
        return keccak256(abi.encode(id, owner));
    }

    /// The deposit address of `id`, deployed or not.
    function forwarderAddress(bytes32 id) public view returns (address) {
        return Clones.predictDeterministicAddress(implementation, saltOf(id), address(this));
    }

    /// For each i: deploys the forwarder of ids[i] if it has no code yet, then moves its native
    /// balance and its balance of tokens[i] (zero: native only) to the owner. One forwarder with two
    /// tokens appears twice. A forwarder whose flush reverts is reported (FlushFailed) and skipped.
    function flush(bytes32[] calldata ids, address[] calldata tokens) external {
        if (msg.sender != owner) revert OnlyOwner();
        uint256 count = ids.length;
        if (count == 0 || count > MAX_BATCH || tokens.length != count) revert BadBatch();
        for (uint256 i; i < count; ++i) {
            bytes32 salt = saltOf(ids[i]);
            address forwarder = Clones.predictDeterministicAddress(implementation, salt, address(this));
            if (forwarder.code.length == 0) Clones.cloneDeterministic(implementation, salt);
            address token = tokens[i];
            try DepositForwarder(payable(forwarder)).flush(token) returns (uint256 tokenAmount, uint256 nativeAmount) {
                if (nativeAmount > 0) emit Flushed(forwarder, address(0), nativeAmount);
                if (tokenAmount > 0) emit Flushed(forwarder, token, tokenAmount);
            } catch {
                emit FlushFailed(forwarder, token);
            }
        }
    }
}
